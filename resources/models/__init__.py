"""The model-call layer without Dagster: request and response types, and the offline provider, so pure stage
logic can build requests and answer them offline without importing a resource."""
