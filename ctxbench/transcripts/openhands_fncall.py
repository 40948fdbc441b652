# ruff: noqa: E501  (the templates below are OpenHands' text, copied verbatim: long lines included)
"""OpenHands' mock function calling: how the tool schemas reach a model that is not on its list.

OpenHands (``openhands/llm/llm.py``) calls the model with native ``tools`` only when function
calling is active for it; otherwise (``mock_function_calling``) ``convert_fncall_messages_to_non_fncall_messages``
(``openhands/llm/fn_call_converter.py``) sends no ``tools``: it appends ``SYSTEM_PROMPT_SUFFIX_TEMPLATE``
with the tools' description to the system message, wraps the first user message in an in-context
example (unless the model is ``openhands-lm``), writes each assistant tool call as ``<function=...>``
text and each tool result as a user message starting ``EXECUTION RESULT of [name]:``.

The templates and the rendering below are OpenHands' (The MIT License, Copyright © 2023),
copied from tag 0.35.0 of ``openhands/llm/fn_call_converter.py`` and ``openhands/llm/llm.py``.
Checked tags: 0.34.0, 0.35.0, 0.35.1, 0.35.2, 0.36.0, 0.36.1 and 0.37.0 have the same converter text,
the same ``FUNCTION_CALLING_SUPPORTED_MODELS`` and the same choice of function calling. A run whose
recorded version is outside 0.34.0-0.37.x (or not recorded) keeps its tools as JSON: later versions
changed the example and the list (0.38.0; gpt-5, claude-sonnet-4 and kimi-k2 joined by 0.50.0; a
pattern table from 0.55.0), 0.30-0.33 had other lists, and guessing mock function calling for a
native run would count about 3,400 tokens a request it never sent, where JSON errs low.
"""

from __future__ import annotations

import json
from typing import Any

from ctxbench.transcripts.model import Message

MOCK_FNCALL = "openhands_mock_fncall"  # metadata["tools_rendering"]: the tools as the system prompt's suffix
MOCK_FNCALL_NO_EXAMPLE = "openhands_mock_fncall_no_example"  # the same, without the in-context example
RENDERINGS = (MOCK_FNCALL, MOCK_FNCALL_NO_EXAMPLE)

# FUNCTION_CALLING_SUPPORTED_MODELS of openhands/llm/llm.py, the same in every checked tag (0.34.0-0.37.0).
FUNCTION_CALLING_SUPPORTED_MODELS: tuple[str, ...] = (
    "claude-3-7-sonnet-20250219",
    "claude-3-5-sonnet",
    "claude-3-5-sonnet-20240620",
    "claude-3-5-sonnet-20241022",
    "claude-3.5-haiku",
    "claude-3-5-haiku-20241022",
    "gpt-4o-mini",
    "gpt-4o",
    "o1-2024-12-17",
    "o3-mini-2025-01-31",
    "o3-mini",
    "o3",
    "o3-2025-04-16",
    "o4-mini",
    "o4-mini-2025-04-16",
    "gemini-2.5-pro",
    "gpt-4.1",
)
# Tags checked to share the list, the templates and the rule: 0.34.0, 0.35.0-0.35.2, 0.36.0, 0.36.1, 0.37.0.
CHECKED_RANGE = ((0, 34), (0, 37))  # major.minor, both ends included


def version_checked(version: str | None) -> bool:
    """Whether ``version`` (``openhands_version`` as recorded) is one whose rules are copied here."""
    parts = (version or "").split(".")
    try:
        major_minor = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return False
    return CHECKED_RANGE[0] <= major_minor <= CHECKED_RANGE[1]


def function_calling_active(model: str, native_tool_calling: bool | None) -> bool:
    """``LLM._function_calling_active`` as OpenHands sets it (llm.py, 0.35.0): the model, the last part
    of its path or a substring match in the supported list, unless ``llm_config.native_tool_calling``
    says otherwise (True: litellm's ``supports_function_calling``; False: off). litellm's answer here
    comes from the model map of the installed litellm, not the one that run shipped with."""
    if native_tool_calling is False:
        return False
    if native_tool_calling is True:
        import litellm  # only for runs that set native_tool_calling (slow to import)

        return bool(litellm.supports_function_calling(model=model))
    models = FUNCTION_CALLING_SUPPORTED_MODELS
    return model in models or model.split("/")[-1] in models or any(m in model for m in models)


def rendering(model: str, native_tool_calling: bool | None, version: str | None = None) -> str | None:
    """How a run sent its tools: None for native ``tools`` (JSON), else the mock-FC rendering; None
    also for a version whose rules are not checked here (see the module's note)."""
    if not version_checked(version) or function_calling_active(model, native_tool_calling):
        return None
    return MOCK_FNCALL if "openhands-lm" not in model else MOCK_FNCALL_NO_EXAMPLE


# From here to the end of the example: OpenHands 0.35.0, openhands/llm/fn_call_converter.py (MIT), verbatim.
SYSTEM_PROMPT_SUFFIX_TEMPLATE = """
You have access to the following functions:

{description}

If you choose to call a function ONLY reply in the following format with NO suffix:

<function=example_function_name>
<parameter=example_parameter_1>value_1</parameter>
<parameter=example_parameter_2>
This is the value for the second parameter
that can span
multiple lines
</parameter>
</function>

<IMPORTANT>
Reminder:
- Function calls MUST follow the specified format, start with <function= and end with </function>
- Required parameters MUST be specified
- Only call one function at a time
- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after.
- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls
</IMPORTANT>
"""

IN_CONTEXT_LEARNING_EXAMPLE_PREFIX = """
Here's a running example of how to perform a task with the provided tools.

--------------------- START OF EXAMPLE ---------------------

USER: Create a list of numbers from 1 to 10, and display them in a web page at port 5000.

ASSISTANT: Sure! Let me first check the current directory:
<function=execute_bash>
<parameter=command>
pwd && ls
</parameter>
</function>

USER: EXECUTION RESULT of [execute_bash]:
/workspace
openhands@runtime:~/workspace$

ASSISTANT: There is no `app.py` file in the current directory. Let me create a Python file `app.py`:
<function=str_replace_editor>
<parameter=command>create</parameter>
<parameter=path>/workspace/app.py</parameter>
<parameter=file_text>
from flask import Flask
app = Flask(__name__)

@app.route('/')
def index():
    numbers = list(range(1, 11))
    return str(numbers)

if __name__ == '__main__':
    app.run(port=5000)
</parameter>
</function>

USER: EXECUTION RESULT of [str_replace_editor]:
File created successfully at: /workspace/app.py

ASSISTANT: I have created a Python file `app.py` that will display a list of numbers from 1 to 10 when you run it. Let me run the Python file for you:
<function=execute_bash>
<parameter=command>
python3 app.py > server.log 2>&1 &
</parameter>
</function>

USER: EXECUTION RESULT of [execute_bash]:
[1] 121
[1]+  Exit 1                  python3 app.py > server.log 2>&1

ASSISTANT: Looks like the server is running with PID 121 then crashed. Let me check the server log:
<function=execute_bash>
<parameter=command>
cat server.log
</parameter>
</function>

USER: EXECUTION RESULT of [execute_bash]:
Traceback (most recent call last):
  File "/workspace/app.py", line 2, in <module>
    from flask import Flask
ModuleNotFoundError: No module named 'flask'

ASSISTANT: Looks like the server crashed because the `flask` module is not installed. Let me install the `flask` module for you:
<function=execute_bash>
<parameter=command>
pip3 install flask
</parameter>
</function>

USER: EXECUTION RESULT of [execute_bash]:
Defaulting to user installation because normal site-packages is not writeable
Collecting flask
  Using cached flask-3.0.3-py3-none-any.whl (101 kB)
Collecting blinker>=1.6.2
  Using cached blinker-1.7.0-py3-none-any.whl (13 kB)
Collecting Werkzeug>=3.0.0
  Using cached werkzeug-3.0.2-py3-none-any.whl (226 kB)
Collecting click>=8.1.3
  Using cached click-8.1.7-py3-none-any.whl (97 kB)
Collecting itsdangerous>=2.1.2
  Using cached itsdangerous-2.2.0-py3-none-any.whl (16 kB)
Requirement already satisfied: Jinja2>=3.1.2 in /home/openhands/.local/lib/python3.10/site-packages (from flask) (3.1.3)
Requirement already satisfied: MarkupSafe>=2.0 in /home/openhands/.local/lib/python3.10/site-packages (from Jinja2>=3.1.2->flask) (2.1.5)
Installing collected packages: Werkzeug, itsdangerous, click, blinker, flask
Successfully installed Werkzeug-3.0.2 blinker-1.7.0 click-8.1.7 flask-3.0.3 itsdangerous-2.2.0

ASSISTANT: The `flask` module is installed successfully. Let me run the Python file again:
<function=execute_bash>
<parameter=command>
python3 app.py > server.log 2>&1 &
</parameter>
</function>

USER: EXECUTION RESULT of [execute_bash]:
[1] 124

ASSISTANT:
Let me check the server log again:
<function=execute_bash>
<parameter=command>
cat server.log
</parameter>
</function>

USER: EXECUTION RESULT of [execute_bash]:
* Serving Flask app 'app'
 * Debug mode: off
WARNING: This is a development server. Do not use it in a production deployment. Use a production WSGI server instead.
 * Running on http://127.0.0.1:5000
Press CTRL+C to quit

ASSISTANT:
The server is running on port 5000 with PID 124. You can access the list of numbers by visiting http://127.0.0.1:5000. If you have any further questions, feel free to ask!

USER: Now kill the server, make it display the numbers in a table format.

ASSISTANT:
Sure! Let me stop the server first:
<function=execute_bash>
<parameter=command>
kill 124
</parameter>
</function>

USER: EXECUTION RESULT of [execute_bash]:
[1]+  Terminated              python3 app.py > server.log 2>&1

ASSISTANT:
Now let me display the numbers in a table format:
<function=str_replace_editor>
<parameter=command>str_replace</parameter>
<parameter=path>/workspace/app.py</parameter>
<parameter=old_str>return str(numbers)</parameter>
<parameter=new_str>return '<table>' + ''.join([f'<tr><td>{i}</td></tr>' for i in numbers]) + '</table>'</parameter>
</function>

USER: EXECUTION RESULT of [str_replace_editor]:
The file /workspace/app.py has been edited. Here's the result of running `cat -n` on a snippet of /workspace/app.py:
     3
     4  @app.route('/')
     5  def index():
     6      numbers = list(range(1, 11))
     7      return '<table>' + ''.join([f'<tr><td>{i}</td></tr>' for i in numbers]) + '</table>'
     8
     9  if __name__ == '__main__':
    10      app.run(port=5000)
Review the changes and make sure they are as expected. Edit the file again if necessary.

ASSISTANT:
Running the updated file:
<function=execute_bash>
<parameter=command>
python3 app.py > server.log 2>&1 &
</parameter>
</function>

USER: EXECUTION RESULT of [execute_bash]:
[1] 126

ASSISTANT:
The server is running on port 5000 with PID 126. You can access the list of numbers in a table format by visiting http://127.0.0.1:5000. Let me know if you have any further requests!
<function=finish>
</function>

--------------------- END OF EXAMPLE ---------------------

Do NOT assume the environment is the same as in the example above.

--------------------- NEW TASK DESCRIPTION ---------------------
""".lstrip()

IN_CONTEXT_LEARNING_EXAMPLE_SUFFIX = """
--------------------- END OF NEW TASK DESCRIPTION ---------------------

PLEASE follow the format strictly! PLEASE EMIT ONE AND ONLY ONE FUNCTION CALL PER MESSAGE.
"""


def tools_description(tools: list[dict[str, Any]]) -> str:
    """``convert_tools_to_description`` (fn_call_converter.py, 0.35.0); a malformed tool is skipped
    (OpenHands would have failed on it, so a run that recorded it did not send it this way)."""
    ret = ""
    for i, tool in enumerate(tools):
        fn = tool.get("function")
        if tool.get("type") != "function" or not isinstance(fn, dict):
            continue
        if i > 0:
            ret += "\n"
        ret += f"---- BEGIN FUNCTION #{i + 1}: {fn.get('name')} ----\n"
        ret += f"Description: {fn.get('description')}\n"
        if "parameters" in fn:
            ret += "Parameters:\n"
            parameters = fn["parameters"] if isinstance(fn["parameters"], dict) else {}
            properties = parameters.get("properties", {})
            required_params = set(parameters.get("required", []))
            for j, (param_name, param_info) in enumerate(properties.items()):
                if not isinstance(param_info, dict):
                    continue
                param_status = "required" if param_name in required_params else "optional"
                param_type = param_info.get("type", "string")
                desc = param_info.get("description", "No description provided")
                if "enum" in param_info:
                    enum_values = ", ".join(f"`{v}`" for v in param_info["enum"])
                    desc += f"\nAllowed values: [{enum_values}]"
                ret += f"  ({j + 1}) {param_name} ({param_type}, {param_status}): {desc}\n"
        else:
            ret += "No parameters are required for this function.\n"
        ret += f"---- END FUNCTION #{i + 1} ----\n"
    return ret


def request_text(tools: list[dict[str, Any]], how: str) -> str:
    """What mock function calling adds to every request: the system prompt's suffix describing the
    tools, and (``MOCK_FNCALL``) the in-context example around the first user message."""
    text = SYSTEM_PROMPT_SUFFIX_TEMPLATE.format(description=tools_description(tools))
    if how == MOCK_FNCALL:
        text += IN_CONTEXT_LEARNING_EXAMPLE_PREFIX + IN_CONTEXT_LEARNING_EXAMPLE_SUFFIX
    return text


def tool_call_text(name: str, arguments: str) -> str:
    """``convert_tool_call_to_string`` (fn_call_converter.py, 0.35.0): a tool call as the assistant's
    text. Arguments that are not a JSON object (OpenHands would have failed on them) are kept as is."""
    ret = f"<function={name}>\n"
    try:
        args = json.loads(arguments)
    except ValueError:
        args = None
    if not isinstance(args, dict):
        return ret + arguments + "\n</function>"
    for param_name, param_value in args.items():
        is_multiline = isinstance(param_value, str) and "\n" in param_value
        ret += f"<parameter={param_name}>"
        if is_multiline:
            ret += "\n"
        ret += f"{param_value}"
        if is_multiline:
            ret += "\n"
        ret += "</parameter>\n"
    ret += "</function>"
    return ret


def assistant_text(message: Message) -> str:
    """An assistant message as mock function calling sends it: its text, then its tool call (OpenHands
    sends one per message; several are written one after the other)."""
    content = message.content
    for call in message.tool_calls:
        content = (content + "\n\n" + tool_call_text(call.name, call.arguments)).lstrip()
    return content


def tool_result_prefix(message: Message) -> str:
    """What mock function calling puts before a tool result, which it sends as a user message."""
    return f"EXECUTION RESULT of [{message.name or 'function'}]:\n"
