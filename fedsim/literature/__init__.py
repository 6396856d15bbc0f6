"""The asynchronous-SGD literature's theorems, through fedsim's public plug-in doors.

Declared as entry points of the ``fedsim.theorems`` group in fedsim's own ``setup.cfg``
(``docs/EXTENDING.md``, "A plug-in package"), exactly as a separately installed package
would; these modules import only public fedsim names (``tests/literature/
test_import_contract.py``).  Statements and their sources: ``docs/theory/koloskova-2022.md``.

* :mod:`fedsim.literature.koloskova` -- Theorem 6 (8) and Theorem 8 (12) as rate shapes
  (``RATE_SHAPE_ONLY``: the appendix with the constants was not read);
* :mod:`fedsim.literature.lemma11` -- Lemma 11's closed forms (explicit);
* :mod:`fedsim.literature.lemma11_family` -- its search family (``koloskova-lemma11``);
* :mod:`fedsim.literature.section44` -- §4.4's claim read as a bound on time (mini-batch
  SGD's expected time to a target, ``PAPER_LITERAL_KNOWN_ERRATUM``);
* :mod:`fedsim.literature.section44_family` -- its search family (``koloskova-44``).
"""

__all__: list[str] = []
