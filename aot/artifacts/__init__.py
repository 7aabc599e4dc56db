"""The typed artifacts that cross a stage boundary and outlive the build: the library
manifest (a build folder's ``metadata.json``) and the project manifest inside it.

This package sits at the bottom of the house: it imports no stage, so every stage and
command can read and write the manifest without importing another.
"""

from aot.artifacts.manifest import (
    GENERATOR,
    METADATA_FILE,
    SCHEMA_VERSION,
    LibraryManifest,
    read_document,
    read_manifest,
    write_manifest,
)
from aot.artifacts.project import BuildManifest, ProjectManifest

__all__ = [
    "GENERATOR",
    "METADATA_FILE",
    "SCHEMA_VERSION",
    "BuildManifest",
    "LibraryManifest",
    "ProjectManifest",
    "read_document",
    "read_manifest",
    "write_manifest",
]
