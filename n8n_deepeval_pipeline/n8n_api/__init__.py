"""n8n over HTTP: its public API (workflows, Data Tables, executions) and workflow webhooks."""
