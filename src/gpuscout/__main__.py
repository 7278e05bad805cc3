from gpuscout.cli import entry

entry()
