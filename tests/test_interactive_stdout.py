"""What plugins print in interactive mode: whole lines reach the flusher, from any thread."""

from __future__ import annotations

import asyncio
import sys
import threading

from pi_host.modes._interactive._stdout import PrintedText, redirect_prints


def test_whole_lines_are_taken_and_a_partial_one_waits_for_its_end() -> None:
    printed = PrintedText(lambda: None)
    printed.add("no end yet")
    assert not printed and printed.take() == ""
    printed.add(" now\nand a start")
    assert printed.take() == "no end yet now\n"
    printed.add(" of more")
    assert printed.take(everything=True) == "and a start of more"  # the app ends: all of it
    assert printed.take(everything=True) == ""


def test_a_print_from_another_thread_wakes_the_loop_and_stdout_is_restored() -> None:
    async def main() -> str:
        woken = asyncio.Event()
        printed = PrintedText(woken.set)
        stdout, stderr = sys.stdout, sys.stderr
        with redirect_prints(printed):
            assert sys.stdout.isatty() == stdout.isatty()

            def work() -> None:
                print("from a thread")
                print("to stderr", file=sys.stderr, flush=True)

            thread = threading.Thread(target=work)
            thread.start()
            thread.join()
            await woken.wait()
        assert (sys.stdout, sys.stderr) == (stdout, stderr)
        return printed.take()

    assert asyncio.run(main()) == "from a thread\nto stderr\n"
