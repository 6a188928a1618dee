"""Training: corpus (provenance, filters, decontamination), tokenizer, pretraining, model card, CLI."""
