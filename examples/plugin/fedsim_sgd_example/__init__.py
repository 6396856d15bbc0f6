"""An example fedsim plug-in: a textbook SGD bound (:mod:`.theorem`), the scenario family
that checks it and its suite rows (:mod:`.family`).  fedsim finds them through the entry
points of this package's setup.cfg; nothing here is imported by fedsim itself."""
