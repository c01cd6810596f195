"""The same tools inside LangChain's own agent harness, ``create_agent`` (the optional ``agents`` extra). Notebook 09.

``create_agent``'s tool node lets a tool's exception escape, and runs one message's calls in threads. A
``wrap_tool_call`` middleware routes every call through :func:`~evidence_lib._toolkit.run_tool_call` instead
(refusals become ``status="error"`` ToolMessages, exactly as in :func:`~evidence_lib.integrations.langchain._loop.run_loop`).
No lock around the calls: independent reads overlap, and the shared ledger never overspends (it decides, lets the
page be fetched outside its lock, and charges under it with every limit checked again).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool

from ..._answers import SYSTEM_PROMPT
from ..._toolkit import run_tool_call

if TYPE_CHECKING:  # the optional agents extra
    from langchain.agents.middleware import AgentMiddleware

__all__ = ["evidence_middleware", "run_create_agent"]


def evidence_middleware(tools: Sequence[BaseTool]) -> AgentMiddleware:
    """A ``create_agent`` middleware: every tool call goes through ``run_tool_call`` (parallel calls overlap)."""
    from langchain.agents.middleware import wrap_tool_call

    @wrap_tool_call
    def evidence_calls(request: Any, handler: Any) -> ToolMessage:
        return run_tool_call(list(tools), request.tool_call)

    return evidence_calls


def run_create_agent(model: Any, tools: Sequence[BaseTool], question: str, *, system_prompt: str = SYSTEM_PROMPT,
                     recursion_limit: int = 40) -> list[BaseMessage]:
    """Run ``question`` through ``langchain.agents.create_agent``; the history, system prompt first.

    Needs ``pip install 'evidence-lib[agents]'`` (the ``langchain`` package); raises ``ImportError`` without it.
    """
    from langchain.agents import create_agent

    agent = create_agent(model, list(tools), system_prompt=system_prompt, middleware=[evidence_middleware(tools)])
    state = agent.invoke({"messages": [HumanMessage(question)]}, {"recursion_limit": recursion_limit})
    return [SystemMessage(system_prompt), *state["messages"]]
