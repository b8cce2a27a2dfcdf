import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HubMetrics } from './hub-metrics.service.js';
import { Public } from '../auth/roles.decorator.js';

@ApiExcludeController()
// Prometheus scrapes without credentials; the counters name no secret.
@Public()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: HubMetrics) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4')
  async scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
