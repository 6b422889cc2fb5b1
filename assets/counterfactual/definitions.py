"""Counterfactual edits of pool images: the asset (found in the package's modules); built by the full rebuild."""

from dagster import Definitions, load_asset_checks_from_package_module, load_assets_from_package_module

import assets.counterfactual as package

GROUP = "counterfactual"

defs = Definitions(
    assets=load_assets_from_package_module(package, group_name=GROUP),
    asset_checks=load_asset_checks_from_package_module(package),
)
