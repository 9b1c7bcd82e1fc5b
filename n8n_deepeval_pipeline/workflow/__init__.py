"""The n8n workflow file and its workflowHash."""
