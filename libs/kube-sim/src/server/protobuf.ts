import { unsupportedMediaType } from '../errors.js';

/** Placeholder until protobuf bodies are decoded: kubectl's generators send them (§0.4). */
export function protobufToJson(_raw: Buffer): unknown {
  throw unsupportedMediaType('application/vnd.kubernetes.protobuf');
}
