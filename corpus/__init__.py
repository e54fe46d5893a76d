"""The ground floor: projects, their people and protocol settings, documents, summaries, stored sentences,
key-facts, segmentation, the import and the long-work row. Every other app builds on it."""
