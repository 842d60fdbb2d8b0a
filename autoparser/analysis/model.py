"""What the analysis found: plain frozen dataclasses, no behaviour. The emitter reads these."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Turn:
    """Where an assistant turn starts and ends."""

    generation_prompt: str = ""  # default mode, after the last user turn
    anchors: tuple[str, ...] = ()  # literal start anchors (empty: use the end of the prompt)
    end_markers: tuple[str, ...] = ()  # end-of-turn markers that close the message
    thinking_modes: tuple[str, ...] = ()  # kwargs that change the generation prompt, e.g. "enable_thinking=False"


@dataclass(frozen=True)
class Reasoning:
    """NONE, TAG_BASED, FORCED_OPEN, FORCED_CLOSED, DELIMITER or TOOLS_ONLY."""

    mode: str = "NONE"
    start: str = ""
    end: str = ""
    end_variants: tuple[str, ...] = ()  # the end marker plus what follows it before content
    # A thinking switch prefills the block (opened or closed) in one mode and leaves the reply's start to
    # the model in another: the model may reason with only the close written (``reasoning</think>answer``).
    lone_close: bool = False
    # The end is the opener's closing form (``<think>`` -> ``</think>``) that no rendering shows: the prompt opens
    # the block and history drops the reasoning without cutting content at any end. Said by a warning.
    end_assumed: bool = False
    # The template writes calls right after the reasoning with no end between (``<|think|>\nR\n<|act|>\n{…}``, where
    # the end opens content): the calls' opener ends the block too.
    calls_end: bool = False


@dataclass(frozen=True)
class Content:
    """PLAIN, ALWAYS_WRAPPED or WRAPPED_WITH_REASONING."""

    mode: str = "PLAIN"
    start: str = ""
    end: str = ""
    numbered: bool = False  # the start counts turns: its numbers vary (``[2] ``)
    # Another wrapper (open, close) models write around their answer, which the template never renders (a
    # workaround's: Hunyuan-A13B's ``<answer>…</answer>``): each marker optional, neither ever content text.
    wrapper: tuple[str, ...] = ()


@dataclass(frozen=True)
class Arguments:
    """How arguments are written inside a call."""

    kind: str = "json"  # json | tagged
    # json dialect
    unquoted_keys: bool = False
    string_delims: tuple[tuple[str, str], ...] = ()
    # tagged: <key_prefix>KEY<key_suffix>VALUE<value_suffix>
    key_prefix: str = ""
    key_suffix: str = ""
    value_suffix: str = ""
    separator: str = ""
    # tagged: the key suffix written before a value that is no string, where the tag names the value's type
    # (``<argument key="k" type="number">``; the probes' values are strings): "" where it is the same
    typed_key_suffix: str = ""
    # pythonic: string values are written JSON-escaped in double quotes (``tojson``), so the json parser
    # reads each value back; otherwise quoted values are taken as the text between the quotes
    json_values: bool = False
    # pythonic: strings written raw between single quotes and lists as Python repr (``['a', 'b c']``):
    # each value is read by the json parser with ' as a string delimiter
    python_values: bool = False


@dataclass(frozen=True)
class Headed:
    """Replies made of headed messages (harmony channels, recipient-based ``>>>name``): every part opens
    with a header naming its channel or recipient, so fields are told apart by header words, not tags."""

    kind: str = ""  # "" | "channels" | "recipient"
    header_start: str = ""  # "<|channel|>" / ">>>"
    header_end: str = ""  # "<|message|>" / "\n"
    recipient: str = ""  # channels: the text before a tool name, e.g. "to=functions."
    reasoning_words: tuple[str, ...] = ()  # header words of reasoning messages
    content_words: tuple[str, ...] = ()  # header words of content messages
    ends: tuple[str, ...] = ()  # markers that end one message


@dataclass(frozen=True)
class Tools:
    """JSON_NATIVE, TAG_WITH_JSON, TAG_WITH_TAGGED or NONE, plus the family the markers reveal."""

    format: str = "NONE"
    family: str = ""
    section_start: str = ""
    section_end: str = ""
    call_start: str = ""  # literal text before the name (tag formats) or before the JSON object
    name_suffix: str = ""  # between the name and the arguments (tag formats)
    call_end: str = ""
    call_separator: str = ""  # between two calls
    # JSON_NATIVE: paths inside each call object
    name_path: tuple[str, ...] = ()
    args_path: tuple[str, ...] = ()
    id_path: tuple[str, ...] = ()
    array_wrapped: bool = False
    name_is_key: bool = False
    first_key: str = ""
    call_keys: tuple[str, ...] = ()  # JSON_NATIVE: the keys of a call object as the template writes them, in order
    # tag formats
    index_in_header: bool = False  # e.g. functions.name:0
    id_in_header: bool = False
    header_pattern: str = ""  # regex of the text between call_start and the arguments, with (?P<name>)
    arguments: Arguments = field(default_factory=Arguments)
    end_markers: tuple[str, ...] = ()  # end-of-turn markers seen after tool calls
    uncovered: tuple[str, ...] = ()  # what the response_template language cannot express
    unreadable: tuple[tuple[str, str], ...] = ()  # (JSON kind, why) of argument values no parser reads back
    headed: Headed = field(default_factory=Headed)  # set when the reply is a run of headed messages
    # JSON_NATIVE: call_start opens a run of calls written back to back (call_separator between them)
    # rather than each call (``<|python_start|>{…}{…}``)
    shared_start: bool = False
    # text written before every call's call_start except right after the generation prompt, where the
    # prompt already ends with it (a literal ``\\n`` after content and between calls)
    call_lead: str = ""
    # Other spellings of call_start a model writes that no rendering shows (set by workarounds: Granite's
    # ``<tool_call>`` for its ``<|tool_call|>`` token); each opens a call as call_start does
    call_start_variants: tuple[str, ...] = ()
    # JSON_NATIVE: leading markers of call_start that open the content written with calls; the rest of
    # call_start follows that content (``<|python_start|>content<|python_end|>{call}``)
    content_opener: str = ""
    # Calls the analysis cannot see at all (rendered only in earlier turns, or only in a call shape
    # callers do not send): why, said by the verdict and its warning, never silently
    unseen: tuple[str, ...] = ()


@dataclass(frozen=True)
class Analysis:
    turn: Turn
    reasoning: Reasoning
    content: Content
    tools: Tools
    workarounds: tuple[str, ...] = ()
    log: tuple[str, ...] = ()  # the --explain trail: each comparison, its diff, the conclusion
