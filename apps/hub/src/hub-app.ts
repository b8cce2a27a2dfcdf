import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import type { HubConfig } from './config/hub-config.js';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { AGENT_API } from '@flotilla/contract';
import { WEBHOOK_PATH, webhookBodyParser } from './webhooks/webhook-body.js';
import { jsonBodyParser } from './common/json-body.js';
import { requestOriginMiddleware } from './common/request-origin.js';

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
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  // Before the JSON parser: webhook signatures cover the raw bytes.
  app.use(WEBHOOK_PATH, webhookBodyParser());
  // Explicit caps everywhere: report batches (up to 1000 entries) get more room than people's requests.
  app.use(AGENT_API.reports, jsonBodyParser(config.limits.agentReportBodyBytes, 'an agent report batch'));
  app.use(jsonBodyParser(config.limits.apiBodyBytes, 'a request body'));
  // After the parsers, so that handlers (and the audit log) see the request's origin.
  app.use(requestOriginMiddleware);
  if (config.roles.api) {
    const doc = new DocumentBuilder()
      .setTitle('Flotilla hub')
      .setDescription('People API (/api/v1) and the agent pull API (/api/agent/v1)')
      .setVersion('0.1.0')
      .addBearerAuth()
      .build();
    SwaggerModule.setup('api/docs', app, SwaggerModule.createDocument(app, doc), {
      jsonDocumentUrl: 'api/docs-json',
    });
  }
  return app;
}
