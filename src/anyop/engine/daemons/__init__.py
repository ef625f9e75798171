"""An object's daemons and timers: spawning, stopping, their runs' states."""
