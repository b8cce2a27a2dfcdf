import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { HubConfig } from './config/hub-config.js';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { WEBHOOK_PATH, webhookBodyParser } from './sources/webhooks/webhook-body.js';
import { requestOriginMiddleware } from './common/request-origin.js';
import { completeApiDocument } from './common/api-docs.js';
import { OpenApiDocument } from './common/openapi.controller.js';
import { HubLogger } from './common/hub-logger.js';
import { serveConsole } from './console/serve-console.js';

/** Builds the hub application (not yet listening): used by main.ts and by the integration tests. */
export async function createHubApp(
  config: HubConfig,
  options: AppModuleOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, options), {
    bufferLogs: true,
    bodyParser: false,
    // Let the caller report a failed start (main.ts prints one line and exits 1).
    abortOnError: false,
  });
  const logger = app.get(HubLogger);
  app.useLogger(logger);
  app.use(logger.requestLog);
  app.disable('x-powered-by');
  // Webhook signatures cover the raw bytes (and are the webhook's authentication, so this body is
  // read first). Every other body is read after its route's guards: see RequestInputInterceptor.
  app.use(WEBHOOK_PATH, webhookBodyParser());
  // After the webhook parser, so that handlers (and the audit log) see the request's origin.
  app.use(requestOriginMiddleware);
  if (config.roles.api && config.openApi !== 'off') {
    const doc = new DocumentBuilder()
      .setTitle('Flotilla hub')
      .setDescription('People API (/api/v1) and the agent pull API (/api/agent/v1)')
      .setVersion('0.1.0')
      .addBearerAuth()
      .build();
    const document = completeApiDocument(SwaggerModule.createDocument(app, doc));
    // `authenticated`: the document is a people route like any other (GET /api/docs-json, viewer);
    // the browser UI, which cannot send a bearer token, is only served when the docs are public.
    if (config.openApi === 'public') {
      SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs-json' });
    } else {
      app.get(OpenApiDocument).document = document;
    }
  }
  if (config.roles.api) serveConsole(app, config.console.dir);
  return app;
}
