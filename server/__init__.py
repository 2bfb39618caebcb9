"""The FastAPI app that runs the query graph: routes, auth, errors and the web pages."""
