import { Body, Controller, Delete, Get, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor } from '../common/actor.js';
import { AdminTokenGuard } from '../common/admin-token.guard.js';
import { AppSetsService } from './appsets.service.js';

@ApiTags('appsets')
@ApiBearerAuth()
@UseGuards(AdminTokenGuard)
@Controller('api/v1/appsets')
export class AppSetsController {
  constructor(private readonly appsets: AppSetsService) {}

  /** Creates or replaces an ApplicationSet (Flotilla's or Argo CD's form): 201 created, 200 replaced. */
  @Post()
  @ApiBody({ description: 'An ApplicationSet document (flotilla.dev/v1alpha1 or argoproj.io/v1alpha1)' })
  async apply(@Body() body: unknown, @Actor() actor: string, @Res({ passthrough: true }) res: Response) {
    const { created, appSet } = await this.appsets.apply(body, actor);
    res.status(created ? 201 : 200);
    return appSet;
  }

  @Get()
  list() {
    return this.appsets.list();
  }

  @Get(':name')
  get(@Param('name') name: string) {
    return this.appsets.get(name);
  }

  @Delete(':name')
  @HttpCode(204)
  async remove(@Param('name') name: string, @Actor() actor: string): Promise<void> {
    await this.appsets.remove(name, actor);
  }
}
