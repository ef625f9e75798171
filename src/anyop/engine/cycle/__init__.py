"""One object's handling cycle: its handlers called, their state recorded, its one patch written."""
