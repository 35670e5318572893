"""A package of this repository: modules, not tools."""
