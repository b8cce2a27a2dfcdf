import { describe, expect, it } from 'vitest';
import { chartRepositoryCredentialsSchema as chartCredentialsSchema } from '@flotilla/contract';
import { covers } from './chart-credentials.service.js';

describe('covers', () => {
  it('matches the URL itself and what lies below it, on a path boundary', () => {
    expect(covers('https://charts.example.com/team', 'https://charts.example.com/team')).toBe(true);
    expect(covers('https://charts.example.com/team', 'https://charts.example.com/team/index.yaml')).toBe(
      true,
    );
    expect(covers('oci://ghcr.io/org', 'oci://ghcr.io/org/charts/web')).toBe(true);
    expect(covers('https://charts.example.com/team', 'https://charts.example.com/teams/index.yaml')).toBe(
      false,
    );
    expect(covers('https://charts.example.com', 'https://charts.example.com.evil.test/index.yaml')).toBe(
      false,
    );
    expect(covers('oci://ghcr.io/org', 'oci://ghcr.io/organisation/web')).toBe(false);
  });
});

describe('chartCredentialsSchema', () => {
  it('normalises a trailing slash and refuses URLs that are not chart repositories or carry credentials', () => {
    const ok = chartCredentialsSchema.parse({
      url: 'https://charts.example.com/',
      username: 'u',
      password: 'p',
    });
    expect(ok.url).toBe('https://charts.example.com');
    for (const url of ['ftp://charts.example.com', 'https://u:p@charts.example.com', 'charts.example.com']) {
      expect(chartCredentialsSchema.safeParse({ url, username: 'u', password: 'p' }).success).toBe(false);
    }
  });
});
