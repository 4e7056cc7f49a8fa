"""`client.h5source.working_directory`: loads in several threads of one process (the working
directory is the process's) leave it where it was."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from h5lake.client.h5source import working_directory


def test_threads_changing_the_working_directory_leave_it_where_it_was(tmp_path: Path) -> None:
    start = os.getcwd()
    folders = [tmp_path / str(i) for i in range(3)]
    seen: list[bool] = []

    def run(folder: Path) -> None:
        folder.mkdir()
        for _ in range(40):
            with working_directory(str(folder)):
                time.sleep(0.0005)
                seen.append(os.getcwd() == str(folder))

    threads = [threading.Thread(target=run, args=(f,)) for f in folders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert os.getcwd() == start and all(seen) and len(seen) == 120
