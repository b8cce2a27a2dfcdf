import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  oidcSignInViewSchema,
  oidcTokenViewSchema,
  type OidcSignInView,
  type OidcTokenView,
} from '@flotilla/contract';
import { Public } from './roles.decorator.js';
import { OidcSignIn, tokenRequest } from './oidc-sign-in.service.js';
import { ApiAnswer, ApiInput } from '../common/api-docs.js';

/** Public: a person who is not signed in yet has no bearer token to show. */
@ApiTags('auth')
@Public()
@Controller('api/v1/auth/oidc')
export class OidcSignInController {
  constructor(private readonly signIn: OidcSignIn) {}

  /** The issuer, the console's client id, the authorization endpoint and scopes; 404 when off. */
  @Get()
  @ApiAnswer(oidcSignInViewSchema)
  config(): Promise<OidcSignInView> {
    return this.signIn.config();
  }

  /** Trades the issuer's code (with the PKCE verifier) for a token this hub accepts. */
  @Post('token')
  @HttpCode(200)
  @ApiInput(tokenRequest, 'OidcTokenRequest')
  @ApiAnswer(oidcTokenViewSchema)
  token(@Body() body: unknown): Promise<OidcTokenView> {
    return this.signIn.exchange(body);
  }
}
