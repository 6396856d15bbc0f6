"""The main job: Monte-Carlo validation of convergence theorems against simulation."""
