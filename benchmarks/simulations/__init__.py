"""Seeded simulations that check a figure the gate states about itself (README.md)."""
