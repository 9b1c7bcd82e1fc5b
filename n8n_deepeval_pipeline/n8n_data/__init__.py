"""n8n's data shapes (agent steps, chat memory, JSON text fields) read into plain values."""
