"""The bandit laboratory of chapter §11, for JupyterLab and for the static site.

* :class:`BanditLab` (:mod:`grpo_core.lab.widget`): ipywidgets controls and
  one view widget over a :class:`grpo_core.bandit.BanditGRPO` run;
* :mod:`grpo_core.lab.spec`: the one definition of the controls, cards and curves, which both labs read;
* :mod:`grpo_core.lab.state`: the one JSON state every view is drawn from, and the session it replays;
* :mod:`grpo_core.lab.view`: the anywidget that draws it in JupyterLab;
* ``static/``: the views (``lab-view.js``), the in-page engine
  (``lab-engine.js``, a port of the bandit step, its numeric guards and NumPy's
  ``default_rng``), the site's controls (``lab-site.js``) and the one
  stylesheet (``lab.css``), served by the book with the ``lab-spec.js`` that :mod:`grpo_core.lab.spec` writes.

Importing this package imports no widget library.
"""

from grpo_core.lab.widget import BanditLab

__all__ = ["BanditLab"]
