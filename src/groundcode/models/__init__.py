"""Models: loading (the only `from_pretrained`), the shipped default, tiny test models."""
