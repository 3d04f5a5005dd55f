-- floor_targets_modules.lua — the module cells of floor_targets.lua (lib/floor_cells.lua)
-- without the floors, for a build older than the floor probes: scripts/floor-table.py's
-- target 5 (no module cell more than 3 % slower than the build at the start of the work)
-- compares the two builds' runs of it made in one device call.
--   M=qrita,cake,rejection C=configs/h100/floor_targets_modules.lua
--   OLD/topkp run $C --backend gpu --only $M -o old.h5
--   build/gpu/topkp run $C --backend gpu --only $M -o new.h5
--   python3 scripts/floor-table.py NEW_FLOORS.tsv,new.tsv old.tsv (each `topkp export`)
include "lib/floor_cells.lua"
