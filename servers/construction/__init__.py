"""Service construction: catalog specs → native typed services (template or LLM), verified or simulated."""
