-- no sweep
local t = string.rep("a", 3) .. math.floor(2.5)
