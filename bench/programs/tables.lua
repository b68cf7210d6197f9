-- A Lua program's allocation pattern: trees of tables built and dropped,
-- strings built piecewise, arrays grown and shrunk.  Written for hakmem's
-- bench-programs.
local function tree(depth)
  if depth == 0 then return {} end
  return {tree(depth - 1), tree(depth - 1)}
end

local function check(t)
  if t[1] == nil then return 1 end
  return 1 + check(t[1]) + check(t[2])
end

local long_lived = tree(16)
local total = 0
for round = 1, 16 do
  total = total + check(tree(13))
end

local parts = {}
for i = 1, 100000 do
  parts[#parts + 1] = string.format("%d:%s", i, string.rep("x", i % 40))
end
local joined = table.concat(parts, ",")
local fields = 0
for _ in joined:gmatch("[^,]+") do fields = fields + 1 end

local map = {}
for i = 1, 150000 do
  map["k" .. (i * 7919 % 100000)] = {i, tostring(i)}
  if i % 4 == 0 then map["k" .. ((i - 2) * 7919 % 100000)] = nil end
end
local n = 0
for _ in pairs(map) do n = n + 1 end

print(total, check(long_lived), fields, n)
