"""Shell completion scripts (bash, zsh, fish) generated from the argparse parser.

`tree(parser)` walks the parser into `Command`s: subcommand names, options, positionals and
what each value completes to. The value kinds: `yaml` (`-c/--config`: *.yaml and *.yml files
and folders), `file` (options and positionals that name a file: metavar PATH, FILE, OUT,
RESULT, BASELINE, QRELS, QUEUE or RUN, or a dest among `FILE_DESTS`), `dir` (dest `dir`),
`choice` (argparse `choices`) and `text` (anything else that takes a value: nothing to offer).
Each shell's script is data (one case per command) and a small fixed walker; none needs a
completion framework beyond the shell's own.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")
FILE_METAVARS = frozenset({"PATH", "FILE", "OUT", "RESULT", "BASELINE", "QRELS", "QUEUE", "RUN"})
FILE_DESTS = frozenset(
    {"run", "baseline", "output", "json", "markdown", "junit", "html", "qrels", "result"}
)


@dataclass(frozen=True)
class Value:
    """What an option's or positional's value completes to."""

    kind: str  # "yaml", "file", "dir", "choice" or "text"
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Option:
    """An option: its strings, help, the value it takes (None: a flag), whether it repeats."""

    strings: tuple[str, ...]
    help: str
    value: Value | None
    repeats: bool = False
    exclusive: bool = False  # -h, --version: nothing else after it


@dataclass(frozen=True)
class Positional:
    """A positional argument: its name, its value, whether it takes the rest of the words."""

    name: str
    value: Value
    rest: bool = False


@dataclass
class Command:
    """A parser: its path of subcommand names, options, positionals and subcommands."""

    path: tuple[str, ...]
    help: str = ""
    options: list[Option] = field(default_factory=list)
    positionals: list[Positional] = field(default_factory=list)
    commands: dict[str, Command] = field(default_factory=dict)

    def walk(self) -> list[Command]:
        """This command and every command beneath it, parents first."""
        found = [self]
        for command in self.commands.values():
            found.extend(command.walk())
        return found


def tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = "") -> Command:
    """The completion tree of `parser`."""
    command = Command(path, help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: _help(choice) for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                if helps.get(name) != argparse.SUPPRESS:
                    command.commands[name] = tree(subparser, (*path, name), helps.get(name, ""))
        elif action.help == argparse.SUPPRESS:
            continue
        elif action.option_strings:
            takes_value = action.nargs != 0
            command.options.append(
                Option(
                    tuple(action.option_strings),
                    _help(action),
                    _value(action) if takes_value else None,
                    repeats=isinstance(action, (argparse._AppendAction, argparse._CountAction)),
                    exclusive=isinstance(action, (argparse._HelpAction, argparse._VersionAction)),
                )
            )
        else:
            name = action.metavar if isinstance(action.metavar, str) else action.dest
            rest = action.nargs in ("*", "+", argparse.REMAINDER)
            command.positionals.append(Positional(name, _value(action), rest))
    return command


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script of `shell` for `parser`."""
    root = tree(parser)
    prog = parser.prog
    if shell == "bash":
        return _bash(root, prog)
    if shell == "zsh":
        return _zsh(root, prog)
    if shell == "fish":
        return _fish(root, prog)
    raise ValueError(f"unknown shell {shell!r}; expected one of {', '.join(SHELLS)}")


def _value(action: argparse.Action) -> Value:
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return Value("choice", tuple(str(choice) for choice in action.choices))
    metavar = action.metavar if isinstance(action.metavar, str) else None
    if action.dest == "config":
        return Value("yaml")
    if action.dest == "dir" or metavar == "DIR":
        return Value("dir")
    if metavar in FILE_METAVARS or (metavar is None and action.dest in FILE_DESTS):
        return Value("file")
    return Value("text")


def _help(action: argparse.Action) -> str:
    """The help on one line, `%(default)s` and the like filled in."""
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return text
    if "%" in text:
        params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
        with contextlib.suppress(KeyError, TypeError, ValueError):
            text = text % params
    return " ".join(text.split())


def _function(prog: str, path: tuple[str, ...] = ()) -> str:
    """A shell function name: `_retrieval_gate_config_validate`."""
    return "_" + re.sub(r"[^A-Za-z0-9]", "_", "_".join((prog, *path)))


def _quote(text: str) -> str:
    """A single-quoted word for bash and zsh."""
    return "'" + text.replace("'", "'\\''") + "'"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --- bash -----------------------------------------------------------------------------------

_BASH_WALKER = r"""
__NAME__() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" npos=0 i word kind next
    local subcommands
    COMPREPLY=()
    # Walk the words before the cursor: descend into subcommands, skip option values,
    # count positionals.
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        if [[ "$word" == "=" ]]; then
            continue
        elif [[ "$word" == -* ]]; then
            kind="$(__NAME___value "$path" "$word")"
            next="${COMP_WORDS[i+1]}"
            if [[ "$kind" != flag && "$word" != *=* ]] && ((i + 1 < COMP_CWORD)); then
                [[ "$next" == "=" ]] && ((i++))
                ((i++))
            fi
        elif [[ " $(__NAME___commands "$path") " == *" $word "* ]]; then
            path="${path:+$path }$word"
            npos=0
        else
            ((npos++))
        fi
    done
    ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD-1]}"
    if [[ "$prev" == "=" ]] && ((COMP_CWORD > 1)); then
        prev="${COMP_WORDS[COMP_CWORD-2]}"
    elif [[ "$cur" == "=" ]]; then
        prev="${COMP_WORDS[COMP_CWORD-1]}"
        cur=""
    fi
    if [[ "$prev" == -* ]]; then
        kind="$(__NAME___value "$path" "$prev")"
        if [[ "$kind" != flag ]]; then
            __NAME___complete "$kind" "$cur"
            return 0
        fi
    fi
    if [[ "$cur" == -* ]]; then
        __NAME___add "$(compgen -W "$(__NAME___options "$path")" -- "$cur")"
        return 0
    fi
    subcommands="$(__NAME___commands "$path")"
    if [[ -n "$subcommands" ]]; then
        __NAME___add "$(compgen -W "$subcommands" -- "$cur")"
        return 0
    fi
    kind="$(__NAME___positional "$path" "$npos")"
    if [[ "$kind" == none ]]; then
        __NAME___add "$(compgen -W "$(__NAME___options "$path")" -- "$cur")"
    else
        __NAME___complete "$kind" "$cur"
    fi
    return 0
}

# Add each line of $1 to COMPREPLY (file names may hold spaces).
__NAME___add() {
    local line
    while IFS= read -r line; do
        [[ -n "$line" ]] && COMPREPLY+=("$line")
    done <<< "$1"
}

__NAME___complete() {
    case "$1" in
        yaml)
            compopt -o filenames 2>/dev/null
            __NAME___add "$(compgen -d -- "$2")"
            __NAME___add "$(compgen -f -X '!*.yaml' -- "$2")"
            __NAME___add "$(compgen -f -X '!*.yml' -- "$2")"
            ;;
        file)
            compopt -o filenames 2>/dev/null
            __NAME___add "$(compgen -f -- "$2")"
            ;;
        dir)
            compopt -o filenames 2>/dev/null
            __NAME___add "$(compgen -d -- "$2")"
            ;;
        choice:*)
            __NAME___add "$(compgen -W "${1#choice:}" -- "$2")"
            ;;
    esac
}

complete -F __NAME__ __PROG__
"""


def _bash(root: Command, prog: str) -> str:
    name = _function(prog)
    commands, options, values, positionals = [], [], [], []
    for command in root.walk():
        key = _quote(" ".join(command.path))
        if command.commands:
            commands.append(f"        {key}) echo {_quote(' '.join(command.commands))} ;;")
        strings = " ".join(s for option in command.options for s in option.strings)
        options.append(f"        {key}) echo {_quote(strings)} ;;")
        for option in command.options:
            if option.value is not None:
                patterns = "|".join(
                    _quote(" ".join((*command.path, s)).strip()) for s in option.strings
                )
                values.append(f"        {patterns}) echo {_quote(_bash_kind(option.value))} ;;")
        for index, positional in enumerate(command.positionals):
            prefix = " ".join((*command.path, ""))
            pattern = _quote(f"{prefix}{index}")
            if positional.rest:
                pattern = f"{_quote(prefix)}*"
            positionals.append(f"        {pattern}) echo {_quote(_bash_kind(positional.value))} ;;")
    lines = [
        f"# bash completion for {prog}; generated by `{prog} completion bash`.",
        f"# Load it with:  source <({prog} completion bash)",
        "",
        f"{name}_commands() {{",
        '    case "$1" in',
        *commands,
        "    esac",
        "}",
        "",
        f"{name}_options() {{",
        '    case "$1" in',
        *options,
        "    esac",
        "}",
        "",
        "# The value an option takes: flag (none), yaml, file, dir, text or choice:WORDS.",
        f"{name}_value() {{",
        '    local option="${2%%=*}"',
        '    case "${1:+$1 }$option" in',
        *values,
        "        *) echo flag ;;",
        "    esac",
        "}",
        "",
        "# The value of the positional argument at index $2: none when there is none.",
        f"{name}_positional() {{",
        '    case "${1:+$1 }$2" in',
        *positionals,
        "        *) echo none ;;",
        "    esac",
        "}",
    ]
    walker = _BASH_WALKER.replace("__NAME__", name).replace("__PROG__", prog)
    return "\n".join(lines) + "\n" + walker


def _bash_kind(value: Value) -> str:
    return "choice:" + " ".join(value.choices) if value.kind == "choice" else value.kind


# --- zsh ------------------------------------------------------------------------------------


def _zsh(root: Command, prog: str) -> str:
    blocks = [
        f"#compdef {prog}",
        f"# zsh completion for {prog}; generated by `{prog} completion zsh`.",
        f"# Load it with:  source <({prog} completion zsh)   (after compinit), or save it as",
        f"# _{prog} in a folder of $fpath.",
    ]
    for command in root.walk():
        blocks.append(_zsh_function(command, prog))
    blocks.append(
        "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
        f'    {_function(prog)} "$@"\n'
        "else\n"
        f"    compdef {_function(prog)} {prog}\n"
        "fi"
    )
    return "\n\n".join(blocks) + "\n"


def _zsh_function(command: Command, prog: str) -> str:
    name = _function(prog, command.path)
    specs = [_zsh_option(option) for option in command.options]
    for index, positional in enumerate(command.positionals, start=1):
        position = "*" if positional.rest else str(index)
        specs.append(_quote(f"{position}:{positional.name}:{_zsh_action(positional.value)}"))
    lines = [f"{name}() {{"]
    if command.commands:
        items = [
            f"        {_quote(_zsh_escape_colon(sub) + ':' + sub_command.help)}"
            for sub, sub_command in command.commands.items()
        ]
        specs += [_quote("1: :->command"), _quote("*:: :->argument")]
        title = " ".join((prog, *command.path, "command"))
        lines += [
            '    local curcontext="$curcontext" state line ret=1',
            "    typeset -A opt_args",
            "    _arguments -C \\",
            *[f"        {spec} \\" for spec in specs[:-1]],
            f"        {specs[-1]} && ret=0",
            "    case $state in",
            "        command)",
            "            local -a commands",
            "            commands=(",
            *[f"    {item}" for item in items],
            "            )",
            f"            _describe -t commands {_quote(title)} commands && ret=0",
            "            ;;",
            "        argument)",
            '            curcontext="${curcontext%:*:*}:'
            + "-".join((prog, *command.path))
            + '-$words[1]:"',
            "            case $words[1] in",
        ]
        for sub in command.commands:
            function = _function(prog, (*command.path, sub))
            lines.append(f"                {_quote(sub)}) {function} && ret=0 ;;")
        lines += ["            esac", "            ;;", "    esac", "    return ret"]
    elif specs:
        lines += ["    _arguments -s -S \\", *[f"        {spec} \\" for spec in specs[:-1]]]
        lines.append(f"        {specs[-1]}")
    else:
        lines.append("    _message 'no arguments'")
    lines.append("}")
    return "\n".join(lines)


def _zsh_option(option: Option) -> str:
    help = _zsh_escape_brackets(option.help)
    value = ""
    if option.value is not None:
        label = option.strings[-1].lstrip("-") or "value"
        value = f":{label}:{_zsh_action(option.value)}"
    if option.exclusive:
        exclusion = "(- *)"
    elif option.repeats:
        exclusion = "*"
    else:
        exclusion = "(" + " ".join(option.strings) + ")" if len(option.strings) > 1 else ""
    if len(option.strings) == 1:
        return _quote(f"{exclusion}{option.strings[0]}[{help}]{value}")
    strings = ",".join(option.strings)
    return f"{_quote(exclusion)}{{{strings}}}{_quote(f'[{help}]{value}')}"


def _zsh_action(value: Value) -> str:
    if value.kind == "yaml":
        return '_files -g "*.(yaml|yml)"'
    if value.kind == "file":
        return "_files"
    if value.kind == "dir":
        return "_files -/"
    if value.kind == "choice":
        return "(" + " ".join(_zsh_escape_word(choice) for choice in value.choices) + ")"
    return " "


def _zsh_escape_brackets(text: str) -> str:
    return re.sub(r"([\[\]\\:])", r"\\\1", text)


def _zsh_escape_colon(text: str) -> str:
    return text.replace(":", "\\:")


def _zsh_escape_word(text: str) -> str:
    return re.sub(r"([\s()\\:])", r"\\\1", text)


# --- fish -----------------------------------------------------------------------------------

_FISH_WALKER = r"""
# The subcommands typed so far, e.g. "config validate".
function __NAME___path
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l path
    for token in $tokens
        string match -q -- '-*' $token; and continue
        contains -- $token (__NAME___commands "$path"); or break
        set -a path $token
    end
    echo "$path"
end

function __NAME___at
    test (__NAME___path) = "$argv[1]"
end

# Folders, and with "yaml" the *.yaml and *.yml files, under the token being completed.
function __NAME___files
    set -l token (commandline -ct | string replace -r -- '^--?[^=]*=' '')
    for name in $token*
        if test -d $name
            echo $name/
        else if test "$argv[1]" = yaml; and string match -qr -- '\.ya?ml$' $name
            echo $name
        end
    end
end

complete -c __PROG__ -f
"""


def _fish(root: Command, prog: str) -> str:
    name = _function(prog)
    lines = [
        f"# fish completion for {prog}; generated by `{prog} completion fish`.",
        f"# Load it with:  {prog} completion fish | source   (or save it in",
        f"# ~/.config/fish/completions/{prog}.fish).",
        "",
        f"function {name}_commands",
        "    switch $argv[1]",
    ]
    for command in root.walk():
        if command.commands:
            lines += [
                f"        case {_fish_quote(' '.join(command.path))}",
                f"            echo {' '.join(_fish_quote(sub) for sub in command.commands)}"
                " | string split ' '",
            ]
    lines += ["    end", "end"]
    lines += _FISH_WALKER.replace("__NAME__", name).replace("__PROG__", prog).splitlines()
    for command in root.walk():
        at = f"{name}_at {_fish_quote(' '.join(command.path))}"
        base = f"complete -c {prog} -n {_fish_quote(at)}"
        for sub, sub_command in command.commands.items():
            lines.append(f"{base} -a {_fish_quote(sub)} -d {_fish_quote(sub_command.help)}")
        for option in command.options:
            flags = " ".join(
                f"-l {s[2:]}" if s.startswith("--") else f"-s {s[1:]}" for s in option.strings
            )
            value = _fish_value(name, option.value)
            lines.append(f"{base} {flags}{value} -d {_fish_quote(option.help)}")
        if command.positionals and not command.commands:
            value = _fish_value(name, command.positionals[0].value, positional=True)
            lines.append(f"{base}{value}")
    return "\n".join(lines) + "\n"


def _fish_value(name: str, value: Value | None, *, positional: bool = False) -> str:
    if value is None:
        return ""
    exclusive = "" if positional else " -x"  # -x: takes a value, and no file names
    if value.kind == "yaml":
        return f"{exclusive} -a '({name}_files yaml)'"
    if value.kind == "file":
        return " -F" if positional else " -r -F"
    if value.kind == "dir":
        return f"{exclusive} -a '({name}_files dir)'"
    if value.kind == "choice":
        return f"{exclusive} -a {_fish_quote(' '.join(value.choices))}"
    return exclusive
