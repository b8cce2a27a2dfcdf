import { Controller, Get, Injectable } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { OpenAPIObject } from '@nestjs/swagger';
import { HubError } from './hub-error.js';

/** The hub's OpenAPI document, set once the app is built (it describes the app's own routes). */
@Injectable()
export class OpenApiDocument {
  document: OpenAPIObject | null = null;
}

/**
 * `GET /api/docs-json` behind the people guard (viewer): with OPENAPI=authenticated, the default,
 * the API's shape is shown only to callers who may use it; with `public` Swagger serves it (and its
 * UI) itself, with `off` nothing does.
 */
@ApiExcludeController()
@Controller('api')
export class OpenApiController {
  constructor(private readonly openApi: OpenApiDocument) {}

  @Get('docs-json')
  document(): OpenAPIObject {
    if (!this.openApi.document) throw new HubError(404, 'not-found', 'the OpenAPI document is not built yet');
    return this.openApi.document;
  }
}
