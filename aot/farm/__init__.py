"""A board farm on TVM's RPC tracker.

``aot serve`` (:mod:`aot.farm.server`) offers one board to a tracker under a key; ``aot run
--tracker HOST:PORT --key KEY`` (:mod:`aot.farm.client`) borrows a free board of that key,
queueing while all are busy, sends it the firmware and inputs, and gets back the same
report a local run gives. :mod:`aot.farm.jobs` names what a server can run,
:mod:`aot.farm.wire` what travels. See docs/farm.md.

The farm comes after the run stage: it uses ``aot.runner``, nothing uses it but the CLI.
"""
