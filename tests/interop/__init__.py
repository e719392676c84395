"""Interoperability: this library against peers it does not control (TypeScript packages from npm)."""
