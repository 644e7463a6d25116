"""Native typed services: the framework, the shared vocabulary and the service library."""
