"""Simulated users: each run of a conversational golden played as one conversation.

DeepEval's own ``ConversationSimulator`` plays the user, with the pipeline's judge as its
model; the workflow answers every user turn in a session of the conversation's own. The
goldens, the conversations and their stopping reasons are plain models here; only
``simulator`` imports DeepEval, and it runs in a process of its own (``process``), started
by ``launcher`` from the Dagster or CLI process, which never imports DeepEval.
"""
