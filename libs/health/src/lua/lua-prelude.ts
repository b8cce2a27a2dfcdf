/**
 * Runs once in the Lua state before any rule. Argo CD runs health scripts in gopher-lua (Lua 5.1) with the
 * standard libraries open, a reduced `os` and a preloaded `json` module; the public scripts rely on that, so
 * the 5.1 names come back here, and whatever could touch the machine (files, processes, output) goes away.
 */
export const LUA_PRELUDE = String.raw`
unpack = unpack or table.unpack
loadstring = loadstring or load
table.getn = table.getn or function(t) return #t end
table.maxn = table.maxn or function(t)
  local n = 0
  for k in pairs(t) do
    if type(k) == 'number' and k > n then n = k end
  end
  return n
end
math.pow = math.pow or function(x, y)
  local r = x ^ y
  return math.tointeger(r) or r
end
math.mod = math.mod or math.fmod
math.log10 = math.log10 or function(x) return math.log(x, 10) end
math.ldexp = math.ldexp or function(m, e) return m * 2.0 ^ e end
string.gfind = string.gfind or string.gmatch

local lua_format = string.format

-- gopher-lua has one number type and prints it like Go: 4/2 as "2", 2/3 as "0.6666666666666666" (shortest
-- round-trip digits); Lua 5.4 says "2.0" and "0.66666666666667". This covers tostring() and
-- string.format('%s'); the .. operator cannot be reached from Lua and keeps the 5.4 form.
debug.setmetatable(0, {
  __tostring = function(n)
    if math.type(n) == 'integer' then return lua_format('%d', n) end
    if n ~= n then return 'NaN' end
    if n == math.huge then return '+Inf' end
    if n == -math.huge then return '-Inf' end
    if n == math.floor(n) and n >= -2^63 and n < 2^63 then return lua_format('%d', math.tointeger(n)) end
    for p = 1, 17 do
      local s = lua_format('%.' .. p .. 'g', n)
      if tonumber(s) == n then return s end
    end
    return lua_format('%.17g', n)
  end,
})

-- gopher-lua formats %d of 2.5 as 2; Lua 5.4 raises "number has no integer representation".
string.format = function(fmt, ...)
  local args = table.pack(...)
  if type(fmt) == 'string' then
    local pos, i = 1, 0
    while true do
      local s, e, conv = fmt:find('%%[-+ #0]*%d*%.?%d*(.)', pos)
      if s == nil then break end
      pos = e + 1
      if conv ~= '%' then
        i = i + 1
        local v = args[i]
        if conv:find('^[dixXoc]$') and math.type(v) == 'float' and v == v and v ~= math.huge and v ~= -math.huge then
          args[i] = v >= 0 and math.floor(v) or math.ceil(v)
        end
      end
    end
  end
  return lua_format(fmt, table.unpack(args, 1, args.n))
end

local json_decode = __flotilla_json_decode
__flotilla_json_decode = nil

local function json_escape(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local named = { ['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
    return named[c] or string.format('\\u%04x', c:byte())
  end) .. '"'
end

local function json_encode(v)
  local t = type(v)
  if v == nil then return 'null' end
  if t == 'boolean' then return tostring(v) end
  if t == 'number' then return tostring(v) end
  if t == 'string' then return json_escape(v) end
  if t ~= 'table' then error('cannot encode ' .. t .. ' to JSON') end
  local n = #v
  if n > 0 or next(v) == nil then
    local parts = {}
    for i = 1, n do parts[i] = json_encode(v[i]) end
    return '[' .. table.concat(parts, ',') .. ']'
  end
  local keys = {}
  for k in pairs(v) do
    if type(k) ~= 'string' then error('cannot encode mixed or invalid key types') end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = json_escape(k) .. ':' .. json_encode(v[k]) end
  return '{' .. table.concat(parts, ',') .. '}'
end

package.preload['json'] = function()
  return { decode = json_decode, encode = json_encode }
end

local safe_os = { time = os.time, date = os.date, clock = os.clock, difftime = os.difftime }
os = safe_os
package.loaded['os'] = safe_os
io = nil
package.loaded['io'] = nil
dofile = nil
loadfile = nil
print = function() end
package.path = ''
package.cpath = ''
package.searchers = { package.searchers[1] }
`;
