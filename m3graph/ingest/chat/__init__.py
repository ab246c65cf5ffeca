"""Conversations and transcripts in the memory graph: loaders for each format, then one ingestion path."""
