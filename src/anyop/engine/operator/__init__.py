"""The root of the task-group tree: serve(), operator(), run() and what runs beside them."""
