import { Buffer } from 'node:buffer';
import { type LuaEngine, LuaFactory, LuaReturn, LuaType, type LuaWasm } from 'wasmoon';
import { type HealthResult, isHealthStatus } from '../health-result.js';
import { LUA_PRELUDE } from './lua-prelude.js';

const LUA_MULTRET = -1;
const LUA_REGISTRYINDEX = -1_000_000 - 1000;
const LUA_RIDX_GLOBALS = 2n;
const LUA_MASKCOUNT = 8;
/** lua_pcallk's status is typed as a plain number. */
const PCALL_OK: number = LuaReturn.Ok;
const HOOK_EVERY_INSTRUCTIONS = 10_000;
/** Argo CD gives each script one second. */
const SCRIPT_TIMEOUT_MS = 1000;

const LUA_TYPE_NAMES = [
  'nil',
  'boolean',
  'userdata',
  'number',
  'string',
  'table',
  'function',
  'userdata',
  'thread',
];

/** A compiled health script: the chunk, or why it does not compile. */
export type CompiledScript = { ref: number; name: string } | { error: string; name: string };

/**
 * One Lua 5.4 VM (wasmoon) shared by every script: scripts compile once and each run gets a fresh global
 * environment holding `obj`, so a script sees no globals left by another run, as with Argo CD's new state per run.
 */
export class LuaRuntime {
  private deadline = 0;

  private constructor(
    private readonly engine: LuaEngine,
    private readonly lua: LuaWasm,
    private readonly L: number,
    private readonly envMetaRef: number,
  ) {}

  static async create(): Promise<LuaRuntime> {
    const engine = await new LuaFactory().createEngine({ injectObjects: false, enableProxy: false });
    const lua = engine.global.lua;
    const L = engine.global.address;
    const decode = lua.module.addFunction((state: number) => LuaRuntime.jsonDecode(lua, state), 'ii');
    lua.lua_pushcclosure(L, decode, 0);
    lua.lua_setglobal(L, '__flotilla_json_decode');
    const prelude = LuaRuntime.load(lua, L, LUA_PRELUDE, 'prelude');
    if (typeof prelude === 'string' || lua.lua_pcallk(L, 0, 0, 0, 0, null) !== PCALL_OK) {
      throw new Error(
        `Lua prelude failed: ${typeof prelude === 'string' ? prelude : lua.lua_tolstring(L, -1, null)}`,
      );
    }
    // Every run's environment falls back to the prepared globals for the libraries.
    lua.lua_createtable(L, 0, 1);
    lua.lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    lua.lua_setfield(L, -2, '__index');
    const envMetaRef = lua.luaL_ref(L, LUA_REGISTRYINDEX);
    const runtime = new LuaRuntime(engine, lua, L, envMetaRef);
    const hook = lua.module.addFunction((state: number) => runtime.onHook(state), 'vii');
    lua.lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_EVERY_INSTRUCTIONS);
    return runtime;
  }

  compile(name: string, source: string): CompiledScript {
    const loaded = LuaRuntime.load(this.lua, this.L, source, name);
    if (typeof loaded === 'string') return { error: loaded, name };
    return { ref: this.lua.luaL_ref(this.L, LUA_REGISTRYINDEX), name };
  }

  /** Runs a script against one object and reads its returned table the way Argo CD does (through JSON). */
  run(script: CompiledScript, obj: unknown): HealthResult {
    if ('error' in script) return { status: 'Unknown', message: script.error };
    const { lua, L } = this;
    const base = lua.lua_gettop(L);
    try {
      lua.lua_rawgeti(L, LUA_REGISTRYINDEX, BigInt(script.ref));
      lua.lua_createtable(L, 0, 2);
      this.push(L, obj);
      lua.lua_setfield(L, -2, 'obj');
      lua.lua_pushvalue(L, -1);
      lua.lua_setfield(L, -2, '_G');
      lua.lua_rawgeti(L, LUA_REGISTRYINDEX, BigInt(this.envMetaRef));
      lua.lua_setmetatable(L, -2);
      lua.lua_setupvalue(L, -2, 1); // the chunk's _ENV
      this.deadline = Date.now() + SCRIPT_TIMEOUT_MS;
      const status = lua.lua_pcallk(L, 0, LUA_MULTRET, 0, 0, null);
      this.deadline = 0;
      if (status !== PCALL_OK) return { status: 'Unknown', message: this.errorText(L, -1) };
      if (lua.lua_gettop(L) === base)
        return { status: 'Unknown', message: 'expect table output from Lua script, not nil' };
      return readHealthTable(lua, L);
    } finally {
      lua.lua_settop(L, base);
    }
  }

  close(): void {
    this.engine.global.close();
  }

  private onHook(state: number): void {
    if (this.deadline !== 0 && Date.now() > this.deadline) {
      this.deadline = 0;
      this.lua.lua_pushstring(state, `script did not finish within ${SCRIPT_TIMEOUT_MS} ms`);
      this.lua.lua_error(state);
    }
  }

  private errorText(L: number, index: number): string {
    const text =
      this.lua.lua_type(L, index) === LuaType.String ? this.lua.lua_tolstring(L, index, null) : undefined;
    return text ?? `script raised a ${LUA_TYPE_NAMES[this.lua.lua_type(L, index)] ?? 'non-string'} error`;
  }

  /** Pushes a JSON value as gopher-lua would see it: null is nil, whole numbers are integers. */
  private push(L: number, value: unknown): void {
    pushValue(this.lua, L, value);
  }

  private static load(lua: LuaWasm, L: number, source: string, name: string): string | undefined {
    const status = lua.luaL_loadbufferx(L, source, Buffer.byteLength(source), `=${name}`, 't');
    if (status === LuaReturn.Ok) return undefined;
    const message = lua.lua_tolstring(L, -1, null);
    lua.lua_settop(L, -2);
    return message;
  }

  private static jsonDecode(lua: LuaWasm, L: number): number {
    const text = lua.lua_type(L, 1) === LuaType.String ? lua.lua_tolstring(L, 1, null) : null;
    let value: unknown;
    try {
      if (text === null) throw new Error('json.decode expects a string');
      value = JSON.parse(text);
    } catch (err) {
      lua.lua_pushstring(L, (err as Error).message);
      return lua.lua_error(L);
    }
    pushValue(lua, L, value);
    return 1;
  }
}

function pushValue(lua: LuaWasm, L: number, value: unknown): void {
  if (value === null || value === undefined) {
    lua.lua_pushnil(L);
  } else if (typeof value === 'boolean') {
    lua.lua_pushboolean(L, value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) lua.lua_pushinteger(L, BigInt(value));
    else lua.lua_pushnumber(L, value);
  } else if (typeof value === 'string') {
    lua.lua_pushstring(L, value);
  } else if (Array.isArray(value)) {
    lua.luaL_checkstack(L, 4, null);
    lua.lua_createtable(L, value.length, 0);
    value.forEach((item, i) => {
      pushValue(lua, L, item);
      lua.lua_rawseti(L, -2, BigInt(i + 1));
    });
  } else if (typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== null && v !== undefined);
    lua.luaL_checkstack(L, 4, null);
    lua.lua_createtable(L, 0, entries.length);
    for (const [key, item] of entries) {
      pushValue(lua, L, item);
      lua.lua_setfield(L, -2, key);
    }
  } else {
    lua.lua_pushnil(L);
  }
}

/** Go's encoding/json names for what a Lua value becomes in JSON, used in its type-mismatch messages. */
function jsonKind(lua: LuaWasm, L: number, index: number): string {
  const type = lua.lua_type(L, index);
  if (type === LuaType.Number) return 'number';
  if (type === LuaType.Boolean) return 'bool';
  if (type === LuaType.Table) {
    return lua.lua_rawlen(L, index) > 0 || isEmptyTable(lua, L, index) ? 'array' : 'object';
  }
  return 'string';
}

function isEmptyTable(lua: LuaWasm, L: number, index: number): boolean {
  lua.lua_pushnil(L);
  if (lua.lua_next(L, index < 0 ? index - 1 : index) === 0) return true;
  lua.lua_settop(L, -3);
  return false;
}

const GO_FIELDS: Record<string, { name: string; type: string }> = {
  status: { name: 'status', type: 'health.HealthStatusCode' },
  message: { name: 'message', type: 'string' },
  aggregateas: { name: 'aggregateAs', type: 'health.HealthStatusCode' },
};

/**
 * Argo CD turns the returned table into JSON and unmarshals it into its HealthStatus struct: field names match
 * case-insensitively, a table with list entries (or no entries) is a JSON array, and a field of the wrong type
 * is an error. The table is at the top of the stack.
 */
function readHealthTable(lua: LuaWasm, L: number): HealthResult {
  const top = lua.lua_gettop(L);
  const type = lua.lua_type(L, top);
  if (type !== LuaType.Table) {
    return {
      status: 'Unknown',
      message: `expect table output from Lua script, not ${LUA_TYPE_NAMES[type] ?? 'unknown'}`,
    };
  }
  if (jsonKind(lua, L, top) === 'array') {
    return {
      status: 'Unknown',
      message: 'json: cannot unmarshal array into Go value of type health.HealthStatus',
    };
  }
  const values: Record<string, string> = {};
  let typeError: string | undefined;
  lua.lua_pushnil(L);
  while (lua.lua_next(L, top) !== 0) {
    // Reading a non-string key as a string would convert it in place and confuse lua_next.
    if (lua.lua_type(L, -2) === LuaType.String) {
      const field = GO_FIELDS[lua.lua_tolstring(L, -2, null).toLowerCase()];
      const valueType = lua.lua_type(L, -1);
      if (field && valueType === LuaType.String) values[field.name] = lua.lua_tolstring(L, -1, null);
      else if (field && valueType !== LuaType.Nil) {
        typeError ??= `json: cannot unmarshal ${jsonKind(lua, L, -1)} into Go struct field HealthStatus.${field.name} of type ${field.type}`;
      }
    }
    lua.lua_settop(L, -2);
  }
  if (typeError) return { status: 'Unknown', message: typeError };
  const status = values['status'] ?? '';
  if (!isHealthStatus(status)) return { status: 'Unknown', message: 'Lua returned an invalid health status' };
  return { status, message: values['message'] ?? '' };
}
