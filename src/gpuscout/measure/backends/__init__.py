"""The measuring backends: the only modules of gpuscout that import a framework.

Each backend is a package, ``backends/<name>/``, imported only once a measurement starts in
the measuring child. Today there is one, ``tensorflow``.
"""
