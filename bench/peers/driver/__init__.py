"""The peers benchmark's driver, one figure per module (bench/peers/README.md)."""
