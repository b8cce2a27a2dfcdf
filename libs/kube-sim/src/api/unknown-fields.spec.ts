import { describe, expect, it } from 'vitest';
import { pruneUnknownFields, strictDecodingMessage } from './unknown-fields.js';

const schema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        size: { type: 'integer' },
        items: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        ports: {
          type: 'object',
          additionalProperties: { type: 'object', properties: { port: { type: 'integer' } } },
        },
        free: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: { known: { type: 'object', properties: { a: { type: 'string' } } } },
        },
        template: {
          type: 'object',
          'x-kubernetes-embedded-resource': true,
          properties: { spec: { type: 'object' } },
        },
        port: { 'x-kubernetes-int-or-string': true },
      },
    },
  },
};

describe('pruneUnknownFields', () => {
  it('drops what the structural schema does not declare and names each path', () => {
    const obj = {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w', labels: { a: 'b' } },
      spec: {
        size: 1,
        colur: 'x',
        items: [{ name: 'a' }, { name: 'b', extra: true }],
        labels: { any: 'thing' },
        ports: { http: { port: 80, proto: 'TCP' } },
        free: { anything: { goes: 1 }, known: { a: 'x', b: 'pruned' } },
        template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: {}, bogus: 1 },
        port: 'http',
      },
      statuz: {},
    };
    expect(pruneUnknownFields(obj, schema)).toEqual([
      'spec.colur',
      'spec.items[1].extra',
      'spec.ports.http.proto',
      'spec.free.known.b',
      'spec.template.bogus',
      'statuz',
    ]);
    expect(obj).toEqual({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w', labels: { a: 'b' } },
      spec: {
        size: 1,
        items: [{ name: 'a' }, { name: 'b' }],
        labels: { any: 'thing' },
        ports: { http: { port: 80 } },
        free: { anything: { goes: 1 }, known: { a: 'x' } },
        template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: {} },
        port: 'http',
      },
    });
  });

  it('an object type with no properties keeps nothing, as the apiserver prunes it', () => {
    const obj = { spec: { template: { spec: { x: 1 } } } };
    expect(pruneUnknownFields(obj, schema)).toEqual(['spec.template.spec.x']);
  });

  it('leaves a conforming object untouched', () => {
    const obj = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: {}, spec: { size: 2 } };
    expect(pruneUnknownFields(obj, schema)).toEqual([]);
    expect(obj.spec).toEqual({ size: 2 });
  });

  it('words a refusal as the apiserver does', () => {
    expect(strictDecodingMessage(['spec.a', 'spec.b'])).toBe(
      'strict decoding error: unknown field "spec.a", unknown field "spec.b"',
    );
  });
});
