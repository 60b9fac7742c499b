/* stands in for a backend's own header */
