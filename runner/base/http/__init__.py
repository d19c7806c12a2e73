"""The runner's bounded HTTP/1.1 server, under every listener it opens (probes, metrics,
webhooks, peers): ``listener`` accepts connections and runs the workers, ``exchange``
moves one connection through a request, ``connections`` holds the bounds, ``http1``
the wire format. The API proxy builds on it (:mod:`runner.proxy.acceptor`).
"""
