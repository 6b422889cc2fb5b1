"""Releases: one release asset per dataset and the cross-benchmark leakage guard (found in the package's modules)."""

import assets.releases as package
from assets.core.pipeline_package import package_definitions

GROUP = "releases"

defs = package_definitions(package, GROUP, kinds=("parquet",))
