"""The bandit laboratory of chapter §11, for JupyterLab and for the static site.

* ``static/lab-controller.js``: the one controller of both labs (the actions and their rules, the session, the
  ledger, the curves, the state the views draw, the one number formatter);
* :class:`BanditLab` (:mod:`grpo_core.lab.widget`): ipywidgets controls and one view widget, the kernel's adapter
  of the controller, which :mod:`grpo_core.lab.host` runs in embedded V8 over a :class:`grpo_core.bandit.BanditGRPO`;
* :mod:`grpo_core.lab.spec`: the one definition of the controls, cards, curves and ledger phrases, which both labs
  read;
* :mod:`grpo_core.lab.view`: the anywidget that draws the state in JupyterLab;
* ``static/``: besides the controller, the views (``lab-view.js``), the in-page engine
  (``lab-engine.js``, a port of the bandit step, its numeric guards and NumPy's
  ``default_rng``), the site's adapter (``lab-site.js``: its controls) and the one
  stylesheet (``lab.css``), served by the book with the ``lab-spec.js`` that :mod:`grpo_core.lab.spec` writes.

Importing this package imports no widget library and no V8.
"""

from grpo_core.lab.widget import BanditLab

__all__ = ["BanditLab"]
