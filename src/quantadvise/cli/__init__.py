"""The typer CLI: thin glue over quantadvise.api."""
