import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import type { HubConfig } from './config/hub-config.js';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { WEBHOOK_PATH, webhookBodyParser } from './webhooks/webhook-body.js';

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
  // Report batches of up to 1000 entries are larger than express' 100 kB default.
  app.useBodyParser('json', { limit: '10mb' });
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
