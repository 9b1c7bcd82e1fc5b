"""The benchmark file's format: camelCase models, errors that name the field, the YAML loader."""
