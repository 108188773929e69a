"""Keeping the catalog's data current: ``provision catalog refresh`` reads the vendors' price APIs.

The catalog layer (``provision.catalog``) is data and a loader only, with no network and no cloud SDK;
the refreshers that ask the price APIs (over HTTPS, and through boto3 for AWS) live here, one module a
source: ``refresh`` (VM prices, the command's driver) and ``refresh_storage`` (shared-filesystem prices).
"""
