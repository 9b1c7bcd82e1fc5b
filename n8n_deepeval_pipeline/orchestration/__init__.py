"""The Dagster wing: assets, automation, resources and Definitions; only it imports Dagster."""
