"""Stage 0: what a SOURCE argument points at (a template file, a model directory, a GGUF file, a model Ollama
pulled, a Hub id) as template text plus special tokens."""
