"""The built-in dataset loaders, one module per source.

Every module here whose name does not start with ``_`` declares a module-level
``LOADER = Loader(...)`` (:class:`audit.datasets.registry.Loader`) and is found by the registry
with :func:`pkgutil.iter_modules`: a new dataset is one new module in this folder. Its ``load``
parses the source into raw float64 features and integer labels and hands them to
:func:`audit.datasets.split.build`, which draws the splits and fits the feature map. Modules
named ``_*`` hold helpers and are not loaders.
"""
