"""Sphinx directives of the gpcompiler site: examples executed while the site builds (so no
example can rot) and the command-line reference generated from the argparse parser.

- ``gp-python``: run the block's Python code (one namespace per page, in the build's
  scratch directory) and show the code and what it printed; an exception fails the build.
- ``gp-shell``: run each line (a here-document with its body) as a shell command in the
  scratch directory and show ``$ command`` with its output. The last command must exit
  with ``:status:`` (default 0), the others with 0, else the build fails. With
  ``:script:`` the block is shown as written, then everything it printed. ``gpcompiler``
  and ``python`` are this checkout's; a plain ``gpcompiler ...`` line (no shell syntax)
  runs in this process through ``gpcompiler.cli.main``, what the console script runs, so
  the imports are paid once per build.
- ``gp-cli``: the ``--help`` of ``gpcompiler`` and of each subcommand, from
  ``gpcompiler.cli.build_parser``.

Only Sphinx and docutils are used. The scratch directory (a temporary directory with
``specs`` and ``generated`` linked to the repository's) is removed when the build ends.
"""
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives

ROOT = Path(__file__).resolve().parents[2]
COMMAND_TIMEOUT = 300
HELP_WIDTH = "96"
# A line with any of these runs in bash; a plain ``gpcompiler ...`` line runs in-process.
SHELL_SYNTAX = "|&;<>()$`\\*?[]#~"


def _scratch(app):
    """The build's scratch directory: specs/ and generated/ linked in, and bin/ with the
    ``gpcompiler`` and ``python`` of this checkout (the package need not be installed)."""
    if getattr(app, "gp_scratch", None) is None:
        path = Path(tempfile.mkdtemp(prefix="gpcompiler-docs-"))
        for name in ("specs", "generated"):
            (path / name).symlink_to(ROOT / name)
        (path / "bin").mkdir()
        for name, command in (("gpcompiler", f'"{sys.executable}" -m gpcompiler'),
                              ("python", f'"{sys.executable}"')):
            shim = path / "bin" / name
            shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
            shim.chmod(0o755)
        app.gp_scratch = path
    return app.gp_scratch


def _environment(scratch):
    """Environment of the shell examples: this checkout first on the paths, unbuffered
    Python (so standard output and error interleave as on a terminal), a fixed width."""
    env = dict(os.environ)
    env["PATH"] = f"{scratch / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(PYTHONUNBUFFERED="1", COLUMNS=HELP_WIDTH)
    return env


def _block(text, language):
    block = nodes.literal_block(text, text)
    block["language"] = language
    return block


class PythonExample(Directive):
    """Execute the content as Python; show it and its standard output."""
    has_content = True
    option_spec = {"hide-output": directives.flag}

    def run(self):
        env = self.state.document.settings.env
        code = "\n".join(self.content)
        namespaces = env.temp_data.setdefault("gp_namespaces", {})
        namespace = namespaces.setdefault(env.docname, {"__name__": "__gpdocs__"})
        output = io.StringIO()
        previous = os.getcwd()
        os.chdir(_scratch(env.app))
        sys.path.insert(0, str(ROOT))
        try:
            with contextlib.redirect_stdout(output):
                exec(compile(code, f"<{env.docname} example>", "exec"), namespace)
        except Exception:  # any failure of an example fails the build
            raise self.error(f"example failed:\n{traceback.format_exc(limit=-3)}") from None
        finally:
            os.chdir(previous)
            sys.path.remove(str(ROOT))
        result = [_block(code, "python")]
        if output.getvalue() and "hide-output" not in self.options:
            result.append(_block(output.getvalue().rstrip("\n"), "output"))
        return result


def _commands(lines):
    """The commands of a shell block: one per line, a here-document with its body."""
    commands, end = [], None
    for line in lines:
        if end is not None:
            commands[-1] += "\n" + line
            end = None if line == end else end
        elif line.strip():
            commands.append(line)
            heredoc = re.search(r"<<-?\s*['\"]?(\w+)", line)
            end = heredoc.group(1) if heredoc else None
    return commands


def _checked(directive, status, expected, output, what):
    """``output``, if ``status`` is the expected exit status; else the build fails."""
    if status != expected:
        raise directive.error(f"{what} exited {status}, expected {expected}:\n{output}")
    return output


class ShellExample(Directive):
    """Run each command; show ``$ command`` and its output (a script: the script as
    written, then what it printed)."""
    has_content = True
    option_spec = {"status": directives.nonnegative_int, "script": directives.flag}

    def run(self):
        commands = _commands(self.content)
        last = self.options.get("status", 0)
        outputs = [(command, self._execute(command, last if i == len(commands) - 1 else 0))
                   for i, command in enumerate(commands)]
        if "script" in self.options:
            script = "\n".join(self.content).strip("\n")
            text = "".join(output for _, output in outputs).rstrip("\n")
            return [_block(script, "bash"), _block(text, "output")]
        shown = "\n".join(f"$ {command}\n{output}".rstrip("\n") for command, output in outputs)
        return [_block(shown, "console")]

    def _execute(self, command, expected):
        """Output of one command that must exit ``expected``: a plain ``gpcompiler ...``
        line in-process, else bash."""
        argv = shlex.split(command) if not set(command) & set(SHELL_SYNTAX) else []
        if argv[:1] == ["gpcompiler"]:
            return self._main(argv[1:], expected, repr(command))
        return self._run(["bash", "-c", command], expected, repr(command))

    def _main(self, argv, expected, what):
        """A plain ``gpcompiler`` command run in this process (the imports are paid once
        per build, not once per command): standard output and error as one text."""
        from gpcompiler.cli import main
        output = io.StringIO()
        previous = os.getcwd()
        os.chdir(_scratch(self.state.document.settings.env.app))
        try:
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                try:
                    status = main(argv)
                except SystemExit as done:      # argparse: --help, usage errors
                    status = done.code
        finally:
            os.chdir(previous)
        return _checked(self, status or 0, expected, output.getvalue(), what)

    def _run(self, argv, expected, what):
        """Standard output and error of ``argv``, run in the scratch directory."""
        scratch = _scratch(self.state.document.settings.env.app)
        done = subprocess.run(argv, cwd=scratch, text=True, env=_environment(scratch),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=COMMAND_TIMEOUT)
        return _checked(self, done.returncode, expected, done.stdout, what)


class CommandLineReference(Directive):
    """The help of every command, generated from the parser the tool runs."""
    has_content = False

    def run(self):
        from gpcompiler.cli import build_parser
        previous = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = HELP_WIDTH
        try:
            parser = build_parser()
            (commands,) = [a for a in parser._actions if a.dest == "command"]
            pages = [("gpcompiler", parser)] + list(commands.choices.items())
            result = []
            for name, command in pages:
                title = name if name == "gpcompiler" else f"gpcompiler {name}"
                target = nodes.target("", "", ids=[f"cli-{name}"])
                result += [target, nodes.rubric(title, title),
                           _block(command.format_help().rstrip("\n"), "output")]
            return result
        finally:
            if previous is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = previous


def _remove_scratch(app, exception):
    if getattr(app, "gp_scratch", None) is not None:
        shutil.rmtree(app.gp_scratch, ignore_errors=True)


def setup(app):
    app.gp_scratch = None
    app.add_directive("gp-python", PythonExample)
    app.add_directive("gp-shell", ShellExample)
    app.add_directive("gp-cli", CommandLineReference)
    app.connect("build-finished", _remove_scratch)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
